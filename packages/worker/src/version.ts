/**
 * This package's version, as `package.json` says (a unit test keeps them equal). A constant
 * rather than a read of `package.json`: the same build runs from the package and from inside
 * podyard's `dist/sdk/worker/`, where the nearest `package.json` is another one.
 */
export const SDK_VERSION = '0.1.0'

/** What reports and pings carry as `runpod_version`. */
export const SDK_VERSION_TAG = `podyard-worker/${SDK_VERSION}`
