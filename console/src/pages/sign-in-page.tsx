import { useEffect, useState, type FormEvent } from 'react'
import { asApiError, type ApiError } from '../api/problem'
import { ErrorMessage } from '../components/error-message'
import { useSessionState } from '../session/session'

/** Sign in with an API key; it is kept in this tab's session storage only (docs/console.md). */
export function SignInPage() {
  const { signIn, notice } = useSessionState()
  const [key, setKey] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ApiError>()

  useEffect(() => {
    document.title = 'Sign in · podyard'
  }, [])

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await signIn(key.trim())
    } catch (caught) {
      setError(asApiError(caught))
      setBusy(false)
    }
  }

  return (
    <main id="main" className="signin">
      <form className="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to podyard</h1>
        {notice ? (
          <p className="notice" role="status">
            {notice}
          </p>
        ) : null}
        <div className="field">
          <label htmlFor="api-key">API key</label>
          <input
            id="api-key"
            type="password"
            autoComplete="off"
            spellCheck={false}
            required
            value={key}
            onChange={(event) => setKey(event.target.value)}
            aria-describedby="api-key-hint"
            placeholder="pyd_…"
          />
          <p className="hint" id="api-key-hint">
            The admin key is printed once when the server first starts; other keys are made on the
            API keys page or by the admin. The key stays in this browser tab only and is forgotten
            when it closes.
          </p>
        </div>
        <ErrorMessage error={error} />
        <button type="submit" className="button primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
