import { Type } from '@sinclair/typebox'

/** The REST error body (spec "Error body (REST)"), served as application/problem+json. */
export const ProblemSchema = Type.Object({
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  errors: Type.Optional(Type.Array(Type.String())),
})
