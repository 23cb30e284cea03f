import type { Template } from '../../domain/templates/template.js'

/** A template as `podTemplates` entries (wire-compat §6.2). */
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
