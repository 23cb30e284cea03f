import type { FormEvent, ReactNode } from 'react'

/** A form whose submit (its button or Enter) calls `onSubmit` and loads no page. */
export function ActionForm({
  label,
  className = 'form',
  onSubmit,
  children,
}: {
  label?: string
  className?: string
  onSubmit: () => void
  children: ReactNode
}) {
  return (
    <form
      className={className}
      aria-label={label}
      onSubmit={(event: FormEvent) => {
        event.preventDefault()
        onSubmit()
      }}
    >
      {children}
    </form>
  )
}
