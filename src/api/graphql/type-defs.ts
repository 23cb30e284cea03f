/**
 * The GraphQL schema (SDL). It grows with the operations RunPod's clients send
 * (wire-compat §6); resolvers only call domain services.
 */
export const typeDefs = /* GraphQL */ `
  type Query {
    "The caller's account."
    myself: Myself!
  }

  type Myself {
    id: String!
    email: String!
  }
`
