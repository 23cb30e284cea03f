import { listHosts } from '../../api/hosts-api'
import { EmptyState } from '../../components/empty-state'
import { Page } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/**
 * The fleet's hosts and their states. Shown only where the server has `/v2/admin/hosts`
 * (issue 17); cordon and drain come with that API (docs/console.md, "Not yet").
 */
export function AdminHostsPage() {
  const { raw } = useSession()
  const hosts = useResource(() => listHosts(raw), [raw], { refreshMs: 5000 })
  return (
    <Page title="Hosts">
      <ResourceView resource={hosts} what="hosts">
        {(list) =>
          list === undefined ? (
            <EmptyState title="This server has no hosts API yet." />
          ) : list.length === 0 ? (
            <EmptyState title="No host." />
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Host</th>
                  <th scope="col">State</th>
                  <th scope="col">Data center</th>
                  <th scope="col">Driver</th>
                </tr>
              </thead>
              <tbody>
                {list.map((host) => (
                  <tr key={host.id}>
                    <td>{host.name ?? host.id}</td>
                    <td>{host.state ? <StatusBadge status={host.state} /> : '—'}</td>
                    <td>{host.dataCenterId ?? '—'}</td>
                    <td>{host.driver ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </ResourceView>
    </Page>
  )
}
