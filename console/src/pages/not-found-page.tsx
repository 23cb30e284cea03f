import { Link } from 'wouter'
import { Page } from '../components/page'

export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <p>
        There is no page here. Go to the <Link href="/">dashboard</Link>.
      </p>
    </Page>
  )
}
