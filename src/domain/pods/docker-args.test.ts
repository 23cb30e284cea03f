import { describe, expect, it } from 'vitest'
import { imageCommandOf } from './docker-args.js'

describe('imageCommandOf', () => {
  it("reads RunPod's JSON form as an entrypoint and a command", () => {
    expect(
      imageCommandOf('{"cmd": ["echo hi && sleep 1"], "entrypoint": ["/bin/sh", "-c"]}'),
    ).toEqual({
      cmd: ['echo hi && sleep 1'],
      entrypoint: ['/bin/sh', '-c'],
    })
    expect(imageCommandOf(' {"cmd": ["serve", "--port", "80"]} ')).toEqual({
      cmd: ['serve', '--port', '80'],
    })
  })

  it('leaves shell lines and other JSON as shell lines', () => {
    expect(imageCommandOf('sleep 600')).toBeUndefined()
    expect(imageCommandOf('{ echo a; echo b; }')).toBeUndefined()
    expect(imageCommandOf('{}')).toBeUndefined()
    expect(imageCommandOf('{"cmd": "sleep 1"}')).toBeUndefined()
    expect(imageCommandOf('{"cmd": ["a"], "user": "root"}')).toBeUndefined()
    expect(imageCommandOf('["a"]')).toBeUndefined()
  })
})
