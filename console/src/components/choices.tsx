import type { ReactNode } from 'react'

/** One of a few named choices as radio buttons under a legend ("Kind": GPU or CPU). */
export function ChoiceGroup<T extends string>({
  legend,
  name,
  value,
  choices,
  onChange,
}: {
  legend: string
  name: string
  value: T
  choices: Array<[T, string]>
  onChange: (value: T) => void
}) {
  return (
    <fieldset className="choices">
      <legend>{legend}</legend>
      {choices.map(([choice, label]) => (
        <label key={choice} className="check">
          <input
            type="radio"
            name={name}
            checked={value === choice}
            onChange={() => onChange(choice)}
          />
          {label}
        </label>
      ))}
    </fieldset>
  )
}

/** A checkbox with its label beside it. */
export function CheckOption({
  checked,
  onChange,
  children,
}: {
  checked: boolean
  onChange: (checked: boolean) => void
  children: ReactNode
}) {
  return (
    <label className="check">
      <input type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} />
      {children}
    </label>
  )
}

/** `list` with `item` added if it was not in it, removed if it was (a checkbox list's toggle). */
export const toggled = <T,>(list: T[], item: T): T[] =>
  list.includes(item) ? list.filter((other) => other !== item) : [...list, item]
