import type { Template } from '../../domain/templates/template.js'

/**
 * A template as `podTemplates`, `podTemplate` and `saveTemplate` answer it (wire-compat §6.2,
 * §6.3). `startScript`, `readme` and `advancedStart` have no place in a Template: they answer
 * null, "" and false, which is what saveTemplate accepts for them.
 */
export function templateView(template: Template) {
  return {
    id: template.id,
    name: template.name,
    imageName: template.image,
    dockerArgs: template.args,
    containerDiskInGb: template.disk,
    volumeInGb: template.mounts.persistent?.size ?? 0,
    volumeMountPath: template.mounts.persistent?.path ?? null,
    ports: template.ports.join(','),
    // Port names are not kept (docs/graphql.md): each port with its number and no name.
    // runpodctl reads the port as a string.
    portsConfig: template.ports.map((port) => ({ port: port.split('/')[0]!, name: null })),
    env: Object.entries(template.env).map(([key, value]) => ({ key, value })),
    containerRegistryAuthId: template.registry,
    isServerless: template.serverless,
    isPublic: template.public,
    // Built-in templates are the platform's own, as RunPod's are "isRunpod".
    isRunpod: template.accountId === null,
    category: template.category,
    startSsh: template.startSsh,
    startJupyter: template.startJupyter,
    startScript: null,
    readme: '',
    advancedStart: false,
  }
}
