import type { ReactNode } from 'react'

/** What a list shows when it has nothing yet, and what to do about it. */
export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div>{children}</div> : null}
    </div>
  )
}
