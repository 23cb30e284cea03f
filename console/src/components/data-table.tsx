import type { ReactNode } from 'react'

/**
 * A table with a header row of `columns`, then the rows given as children. `actions` adds a
 * last column for the rows' buttons, named for screen readers only.
 */
export function DataTable({
  columns,
  actions,
  caption,
  className,
  children,
}: {
  columns: string[]
  actions?: boolean
  /** A `<caption>` element. */
  caption?: ReactNode
  className?: string
  children: ReactNode
}) {
  return (
    <table className={className}>
      {caption}
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
          {actions ? (
            <th scope="col">
              <span className="offscreen">Actions</span>
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  )
}
