import { useEffect, useRef, type ReactNode } from 'react'
import { Link, useLocation } from 'wouter'
import { usd } from './components/format'
import { balanceNotEnforced, NOT_ENFORCED_NOTE, NOT_ENFORCED_SHORT } from './components/spend-stats'
import { useSession } from './session/session'

interface NavItem {
  href: string
  label: string
}

const main: NavItem[] = [
  { href: '/', label: 'Dashboard' },
  { href: '/pods', label: 'Pods' },
  { href: '/serverless', label: 'Serverless' },
  { href: '/models', label: 'Public models' },
  { href: '/templates', label: 'Templates' },
  { href: '/network-volumes', label: 'Network volumes' },
  { href: '/registries', label: 'Registries' },
  { href: '/secrets', label: 'Secrets' },
  { href: '/billing', label: 'Billing' },
  { href: '/api-keys', label: 'API keys' },
  { href: '/ssh-keys', label: 'SSH keys' },
]

function NavLink({ item }: { item: NavItem }) {
  const [location] = useLocation()
  const current =
    item.href === '/'
      ? location === '/'
      : location === item.href || location.startsWith(`${item.href}/`)
  return (
    <li>
      <Link href={item.href} aria-current={current ? 'page' : undefined}>
        {item.label}
      </Link>
    </li>
  )
}

/** The frame of every page: a skip link, the account bar, the navigation and the main area. */
export function Shell({ children }: { children: ReactNode }) {
  const session = useSession()
  const { account } = session
  const [location, navigate] = useLocation()
  const mainRef = useRef<HTMLElement>(null)

  // After a client-side navigation the keyboard starts again at the top of the new page.
  // (Compared with the last location, not counted, so that a second run of the effect, as
  // React's strict mode does, moves nothing.)
  const shown = useRef(location)
  useEffect(() => {
    if (shown.current === location) return
    shown.current = location
    mainRef.current?.focus()
  }, [location])

  // The next person to sign in starts at the dashboard, not on a page of this account's.
  const signOut = () => {
    navigate('/', { replace: true })
    session.signOut()
  }

  const admin: NavItem[] = session.isAdmin
    ? [
        { href: '/admin/accounts', label: 'Accounts' },
        { href: '/admin/hosts', label: 'Hosts' },
      ]
    : []

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          podyard
        </Link>
        <div className="account-summary">
          <span>
            {account.email}
            {session.isAdmin ? <span className="badge badge-busy">admin</span> : null}
          </span>
          <span>
            Balance <strong>{usd(account.balance)}</strong>
            {balanceNotEnforced(account) ? (
              <span className="muted" title={NOT_ENFORCED_NOTE}>
                {' '}
                {NOT_ENFORCED_SHORT}
              </span>
            ) : null}
          </span>
          <button type="button" className="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <div className="layout">
        <nav aria-label="Main" className="sidenav">
          <ul>
            {main.map((item) => (
              <NavLink key={item.href} item={item} />
            ))}
          </ul>
          {admin.length > 0 ? (
            <>
              <h2 className="nav-heading">Admin</h2>
              <ul>
                {admin.map((item) => (
                  <NavLink key={item.href} item={item} />
                ))}
              </ul>
            </>
          ) : null}
        </nav>
        <main id="main" ref={mainRef} tabIndex={-1}>
          {children}
        </main>
      </div>
    </>
  )
}
