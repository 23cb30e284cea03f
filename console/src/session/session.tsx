import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react'
import { createApiClient, ok, type ApiClient } from '../api/client'
import { RawApi } from '../api/raw-api'
import type { Account } from '../api/types'

/**
 * The signed-in API key lives in sessionStorage: it survives a reload of the tab and is gone
 * when the tab or browser closes, and no other tab or site sees it (docs/console.md).
 */
const STORAGE_KEY = 'podyard.apiKey'

export interface Session {
  account: Account
  api: ApiClient
  raw: RawApi
  isAdmin: boolean
  /** Reads the account again (balance, spend) after a change. */
  refreshAccount(): Promise<void>
  signOut(message?: string): void
}

interface SessionState {
  session: Session | undefined
  /** Why the last session ended, shown on the sign-in page. */
  notice: string | undefined
  /** True while a stored key is being checked at start. */
  restoring: boolean
  signIn(apiKey: string): Promise<void>
}

const SessionContext = createContext<SessionState | undefined>(undefined)

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<{ session?: Session; notice?: string; restoring: boolean }>(
    () => ({ restoring: sessionStorage.getItem(STORAGE_KEY) !== null }),
  )

  const endSession = useCallback((message?: string) => {
    sessionStorage.removeItem(STORAGE_KEY)
    setState({ restoring: false, ...(message ? { notice: message } : {}) })
  }, [])

  const signIn = useCallback(
    async (apiKey: string) => {
      // A 401 while signing in is the answer shown on the form; afterwards it ends the session.
      let live = false
      const expired = () => {
        if (!live) return
        live = false
        endSession('Your API key is no longer valid (revoked or expired). Sign in again.')
      }
      const api = createApiClient({ apiKey, onUnauthorized: expired })
      const raw = new RawApi(apiKey, expired)
      const account = await ok(api.GET('/v2/account'))
      live = true
      const session: Session = {
        account,
        api,
        raw,
        isAdmin: account.role === 'admin',
        refreshAccount: async () => {
          const next = await ok(api.GET('/v2/account'))
          setState((current) =>
            current.session
              ? { ...current, session: { ...current.session, account: next } }
              : current,
          )
        },
        signOut: (message) => {
          live = false
          endSession(message)
        },
      }
      sessionStorage.setItem(STORAGE_KEY, apiKey)
      setState({ session, restoring: false })
    },
    [endSession],
  )

  // A key kept from before a reload is checked once; a refused one is forgotten.
  const restoreStarted = useRef(false)
  useEffect(() => {
    if (restoreStarted.current) return
    restoreStarted.current = true
    const stored = sessionStorage.getItem(STORAGE_KEY)
    if (stored) {
      signIn(stored).catch(() => endSession('The saved API key is no longer valid. Sign in again.'))
    }
  }, [signIn, endSession])

  const value = useMemo<SessionState>(
    () => ({
      session: state.session,
      notice: state.notice,
      restoring: state.restoring,
      signIn,
    }),
    [state, signIn],
  )
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>
}

export function useSessionState(): SessionState {
  const value = useContext(SessionContext)
  if (!value) throw new Error('useSessionState outside SessionProvider')
  return value
}

/** The signed-in session; pages are only rendered inside one. */
export function useSession(): Session {
  const { session } = useSessionState()
  if (!session) throw new Error('useSession without a signed-in session')
  return session
}
