/** wire-compat §2.4: RunPod names (pods, templates, endpoints, volumes, registries) are at most 191 characters. */
export const MAX_NAME_LENGTH = 191
