import { describe, expect, it } from 'vitest'
import { installHint, missingPackageOf, npmPackageOf } from './dev-hints.js'

describe('the hint of podyard dev for an import that fails', () => {
  it("reads the package from Node's and Python's errors", () => {
    expect(
      missingPackageOf(
        'javascript',
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'left-pad' imported from /w/h.mjs",
      ),
    ).toBe('left-pad')
    expect(missingPackageOf('typescript', "Error: Cannot find module '@scope/pkg/sub/path'")).toBe(
      '@scope/pkg',
    )
    expect(missingPackageOf('javascript', "Error: Cannot find module 'lodash/fp'")).toBe('lodash')
    expect(missingPackageOf('python', "ModuleNotFoundError: No module named 'runpod'")).toBe(
      'runpod',
    )
    expect(
      missingPackageOf('python', "ModuleNotFoundError: No module named 'runpod.serverless'"),
    ).toBe('runpod')
    // Import names that are not the package's name.
    expect(missingPackageOf('python', "ModuleNotFoundError: No module named 'cv2'")).toBe(
      'opencv-python',
    )
    expect(missingPackageOf('python', "ModuleNotFoundError: No module named 'PIL'")).toBe('pillow')
  })

  it('gives none for a missing file, a built-in, another runtime, or any other line', () => {
    expect(
      missingPackageOf(
        'javascript',
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/w/nope.js' imported from /w/h.mjs",
      ),
    ).toBeUndefined()
    expect(missingPackageOf('javascript', "Error: Cannot find module './nope'")).toBeUndefined()
    expect(npmPackageOf('node:fs')).toBeUndefined()
    expect(npmPackageOf('file:///w/x.js')).toBeUndefined()
    expect(missingPackageOf('python', "Error: Cannot find module 'x'")).toBeUndefined()
    expect(
      missingPackageOf('javascript', "ModuleNotFoundError: No module named 'x'"),
    ).toBeUndefined()
    expect(missingPackageOf('python', 'Traceback (most recent call last):')).toBeUndefined()
  })

  it('says in one line what to run, and where', () => {
    const node = installHint(
      { file: '/home/you/my app/handler.ts', kind: 'typescript', python: 'python3' },
      'left-pad',
    )
    expect(node).not.toContain('\n')
    expect(node).toContain("run `npm install left-pad` in '/home/you/my app'")
    const python = installHint(
      { file: '/w/handler.py', kind: 'python', python: '/w/.venv/bin/python' },
      'runpod',
    )
    expect(python).not.toContain('\n')
    expect(python).toContain('run `/w/.venv/bin/python -m pip install runpod`')
  })
})
