import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { repoRoot } from './cli.js'

const run = promisify(execFile)

/** What `installPackages` made under its folder. */
export interface InstalledPackages {
  /** The installed bin: `<prefix>/bin/podyard`. */
  podyard: string
  prefix: string
  /** The repository's tarball, its file name in the folder, and the paths it holds. */
  tarball: string
  packedFiles: string[]
  /** What `npm install -g` printed. */
  installOutput: string
  /** A handler project (`<folder>/app`, ESM) with @podyard/worker installed from its tarball. */
  app: string
}

const NPM_INSTALL_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error']

/**
 * podyard as a user installs it (docs: "Installing it as a package"): the repository's tarball
 * and @podyard/worker's, packed into `dir`; the first installed globally into a prefix of its
 * own (`npm install -g --prefix`), the second into a handler project beside it. With nothing
 * but Node.js and npm: dependencies from the registry or npm's cache, better-sqlite3 compiled.
 *
 * The tarball is packed with --ignore-scripts from the checkout's build (`npm install` built
 * it; the suite's global setup rebuilt the server and SDK): `npm pack`'s prepack would rebuild
 * dist/console under the other suites running beside this one.
 */
export async function installPackages(dir: string): Promise<InstalledPackages> {
  const pack = async (cwd: string, flags: string[]) => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir, ...flags], {
      cwd,
    })
    const [packed] = JSON.parse(stdout) as Array<{
      filename: string
      files: Array<{ path: string }>
    }>
    return packed!
  }
  const packed = await pack(repoRoot, ['--ignore-scripts'])
  const worker = await pack(path.join(repoRoot, 'packages', 'worker'), [])

  const prefix = path.join(dir, 'global')
  const install = await run(
    'npm',
    [
      'install',
      '--global',
      '--prefix',
      prefix,
      ...NPM_INSTALL_FLAGS,
      path.join(dir, packed.filename),
    ],
    { cwd: dir, maxBuffer: 64 * 1024 * 1024 },
  )

  const app = path.join(dir, 'app')
  mkdirSync(app)
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({ name: 'app', private: true, type: 'module' }),
  )
  await run('npm', ['install', ...NPM_INSTALL_FLAGS, path.join(dir, worker.filename)], {
    cwd: app,
  })
  return {
    podyard: path.join(prefix, 'bin', 'podyard'),
    prefix,
    tarball: packed.filename,
    packedFiles: packed.files.map((file) => file.path),
    installOutput: install.stdout + install.stderr,
    app,
  }
}
