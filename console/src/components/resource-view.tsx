import type { ReactNode } from 'react'
import type { Resource } from '../hooks/use-resource'
import { ErrorMessage } from './error-message'
import { Loading } from './loading'

/** Loading, error, then the data: the three states every page section has. */
export function ResourceView<T>({
  resource,
  what,
  children,
}: {
  resource: Resource<T>
  what: string
  children: (data: T) => ReactNode
}) {
  if (resource.data === undefined) {
    return resource.error ? <ErrorMessage error={resource.error} /> : <Loading what={what} />
  }
  return (
    <>
      {resource.error ? <ErrorMessage error={resource.error} /> : null}
      {children(resource.data)}
    </>
  )
}

/** A list as a ResourceView, with `empty` in place of the list while it has nothing. */
export function ListView<T>({
  resource,
  what,
  empty,
  children,
}: {
  resource: Resource<T[]>
  what: string
  empty: ReactNode
  children: (list: T[]) => ReactNode
}) {
  return (
    <ResourceView resource={resource} what={what}>
      {(list) => (list.length === 0 ? empty : children(list))}
    </ResourceView>
  )
}
