import { lazy, Suspense } from 'react'
import { Route, Switch } from 'wouter'
import { Loading } from './components/loading'
import { Shell } from './shell'
import { useSessionState } from './session/session'
import { AdminAccountsPage } from './pages/admin/admin-accounts-page'
import { AdminHostsPage } from './pages/admin/admin-hosts-page'
import { ApiKeysPage } from './pages/account/api-keys-page'
import { SecretsPage } from './pages/account/secrets-page'
import { SshKeysPage } from './pages/account/ssh-keys-page'
import { DashboardPage } from './pages/dashboard-page'
import { EndpointFormPage } from './pages/serverless/endpoint-form-page'
import { EndpointPage } from './pages/serverless/endpoint-page'
import { EndpointsPage } from './pages/serverless/endpoints-page'
import { ModelsPage } from './pages/models-page'
import { NotFoundPage } from './pages/not-found-page'
import { PodCreatePage } from './pages/pods/pod-create-page'
import { PodEditPage } from './pages/pods/pod-edit-page'
import { PodPage } from './pages/pods/pod-page'
import { PodsPage } from './pages/pods/pods-page'
import { RegistriesPage } from './pages/storage/registries-page'
import { TemplatesPage } from './pages/storage/templates-page'
import { VolumesPage } from './pages/storage/volumes-page'
import { SignInPage } from './pages/sign-in-page'

// The charts library is loaded with the billing page only, outside the first page's budget.
const BillingPage = lazy(() => import('./pages/billing/billing-page'))

export function App() {
  const { session, restoring } = useSessionState()
  if (restoring) return <Loading what="your session" />
  if (!session) return <SignInPage />
  return (
    <Shell>
      <Suspense fallback={<Loading what="the page" />}>
        <Switch>
          <Route path="/" component={DashboardPage} />
          <Route path="/pods" component={PodsPage} />
          <Route path="/pods/new" component={PodCreatePage} />
          <Route path="/pods/:id/edit" component={PodEditPage} />
          <Route path="/pods/:id" component={PodPage} />
          <Route path="/serverless" component={EndpointsPage} />
          <Route path="/serverless/new" component={EndpointFormPage} />
          <Route path="/serverless/:id/edit" component={EndpointFormPage} />
          <Route path="/serverless/:id" component={EndpointPage} />
          <Route path="/templates" component={TemplatesPage} />
          <Route path="/network-volumes" component={VolumesPage} />
          <Route path="/registries" component={RegistriesPage} />
          <Route path="/secrets" component={SecretsPage} />
          <Route path="/ssh-keys" component={SshKeysPage} />
          <Route path="/api-keys" component={ApiKeysPage} />
          <Route path="/billing" component={BillingPage} />
          <Route path="/models" component={ModelsPage} />
          {session.isAdmin ? <Route path="/admin/accounts" component={AdminAccountsPage} /> : null}
          {session.isAdmin ? <Route path="/admin/hosts" component={AdminHostsPage} /> : null}
          <Route component={NotFoundPage} />
        </Switch>
      </Suspense>
    </Shell>
  )
}
