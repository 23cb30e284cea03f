import { StartupRefusal } from '../shared/startup-refusal.js'

/**
 * The API port could not be opened. Node's own message (`listen EADDRINUSE: address already in
 * use 127.0.0.1:8080`) names the code but not what to do; this one says how to pick another
 * port. A startup refusal (exit code 2), like a configuration error.
 */
export class ListenError extends StartupRefusal {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options)
    this.name = 'ListenError'
  }
}

const OTHER_PORT =
  'pass --port <n> (or set PODYARD_PORT) for another port, or --port 0 for any free one'

/** The error of a failed listen on `host:port`, with what to do for the usual causes. */
export function listenError(error: unknown, host: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code
  const where = `${host}:${port}`
  if (code === 'EADDRINUSE') {
    return new ListenError(
      `cannot listen on ${where}: another program (another podyard?) already listens there; ${OTHER_PORT}`,
      { cause: error },
    )
  }
  if (code === 'EACCES') {
    return new ListenError(
      `cannot listen on ${where}: permission denied (ports below 1024 need privileges); ${OTHER_PORT}`,
      { cause: error },
    )
  }
  if (code === 'EADDRNOTAVAIL') {
    return new ListenError(
      `cannot listen on ${where}: no interface of this machine has that address; pass --host 127.0.0.1 or --host 0.0.0.0`,
      { cause: error },
    )
  }
  return error as Error
}
