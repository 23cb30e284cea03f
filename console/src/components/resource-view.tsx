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
