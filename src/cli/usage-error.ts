/**
 * A mistake in what the user gave the command on this machine (a flag's value, `--input` that
 * is not JSON, an input file that cannot be read, flags that exclude each other), found before
 * any request: exit code 2 like commander's own usage errors, with a message naming the flag.
 */
export class UsageError extends Error {
  override name = 'UsageError'
}
