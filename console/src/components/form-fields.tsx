import type { ReactNode } from 'react'
import { Field } from './field'

interface Labelled<V> {
  label: string
  hint?: ReactNode
  value: V
  onChange: (value: V) => void
  required?: boolean
}

/**
 * A labelled one-line text input; `mono` for what is typed as code (commands, paths, ports).
 * `type="number"` (with `min`) where a number may also be left empty: its value stays the text.
 */
export function TextField({
  type,
  mono,
  autoComplete,
  placeholder,
  min,
  ...field
}: Labelled<string> & {
  type?: 'email' | 'password' | 'datetime-local' | 'number'
  mono?: boolean
  autoComplete?: string
  placeholder?: string
  min?: number
}) {
  return (
    <Field label={field.label} hint={field.hint}>
      {(props) => (
        <input
          {...props}
          type={type}
          className={mono ? 'mono' : undefined}
          required={field.required}
          autoComplete={autoComplete}
          placeholder={placeholder}
          min={min}
          value={field.value}
          onChange={(e) => field.onChange(e.target.value)}
        />
      )}
    </Field>
  )
}

/** A labelled number input. */
export function NumberField({
  min,
  max,
  step,
  ...field
}: Labelled<number> & { min?: number; max?: number; step?: number }) {
  return (
    <Field label={field.label} hint={field.hint}>
      {(props) => (
        <input
          {...props}
          type="number"
          min={min}
          max={max}
          step={step}
          value={field.value}
          onChange={(e) => field.onChange(Number(e.target.value))}
        />
      )}
    </Field>
  )
}

/** A labelled select of the `<option>`s given as children; its value as the options have it. */
export function SelectField({
  value,
  children,
  ...field
}: Omit<Labelled<string>, 'value'> & { value: string | number; children: ReactNode }) {
  return (
    <Field label={field.label} hint={field.hint}>
      {(props) => (
        <select
          {...props}
          required={field.required}
          value={value}
          onChange={(e) => field.onChange(e.target.value)}
        >
          {children}
        </select>
      )}
    </Field>
  )
}
