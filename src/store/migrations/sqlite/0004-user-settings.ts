/** User settings: the authorized_keys text of `updateUserSettings(input: {pubKey})`. */
export const statements = [`alter table users add column pub_key text`]
