/**
 * The GraphQL schema's templates, registry credentials and account secrets.
 * Part of `typeDefs` (type-defs.ts).
 */
export const templateTypeDefs = /* GraphQL */ `
  type PodTemplate {
    id: String!
    name: String!
    imageName: String!
    dockerArgs: String!
    containerDiskInGb: Int!
    volumeInGb: Int!
    volumeMountPath: String
    "comma-separated <port>/<protocol>"
    ports: String!
    "Each port's number; names are not kept, so name is null."
    portsConfig: [PortConfig!]!
    env: [EnvironmentVariable!]!
    containerRegistryAuthId: String
    isServerless: Boolean!
    isPublic: Boolean!
    isRunpod: Boolean!
    category: String!
    startSsh: Boolean!
    startJupyter: Boolean!
    "Not offered: always null."
    startScript: String
    "Not kept: always empty."
    readme: String!
    "Not kept: always false."
    advancedStart: Boolean!
  }

  "Registry credentials: only id and name ever come back."
  type RegistryAuth {
    id: String!
    name: String!
  }

  "runpodctl declares podTemplates(input: PodTemplateInput)."
  input PodTemplateInput {
    isRunpod: Boolean
  }

  input SaveTemplateInput {
    "Absent: create. Given: update the caller's own template; absent or null fields are kept."
    id: String
    name: String
    imageName: String
    "Run through /bin/sh -c; empty: the image's default command."
    dockerArgs: String
    containerDiskInGb: Int
    "GB of a persistent volume for pods made from it; 0: none."
    volumeInGb: Int
    "Where that volume is mounted (default /workspace)."
    volumeMountPath: String
    "comma-separated <port>/<protocol>, e.g. 8888/http,22/tcp"
    ports: String
    env: [EnvironmentVariableInput]
    isServerless: Boolean
    "Registry credentials id; empty string: none."
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    "Not offered: only null or empty is accepted."
    startScript: String
    isPublic: Boolean
    "Accepted, not kept."
    readme: String
    "Accepted, not kept."
    advancedStart: Boolean
    "NVIDIA, AMD or CPU"
    category: String
    "Accepted, not kept: ports come from ports."
    portsConfig: [PortConfigInput]
  }

  "An account secret: its value never comes back."
  type Secret {
    id: String!
    name: String!
    description: String
  }

  input SecretCreateInput {
    "1 to 64 letters, digits or underscores; unique in the account"
    name: String!
    value: String!
    description: String
  }

  input SaveRegistryAuthInput {
    name: String!
    username: String!
    password: String!
  }

  input UpdateRegistryAuthInput {
    id: String!
    username: String!
    password: String!
  }
`
