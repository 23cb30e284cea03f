/**
 * "This installation refuses to start as configured": a bad configuration or fleet file, a port
 * in use, a store held by another server or migrated by a newer podyard, a wrong encryption key,
 * an engine that does not answer. The CLI prints the message alone (no stack) and exits 2; each
 * kind is a subclass, so the message and its fields stay with what failed.
 */
export class StartupRefusal extends Error {}
