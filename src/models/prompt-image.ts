/**
 * The reference image "model": a deterministic renderer of a prompt into a PNG, pure code on
 * node:zlib. It is a stand-in so that public image endpoints work offline, not AI: the picture
 * is the prompt's text in a 5x7 pixel font on a vertical gradient whose colours come from a
 * hash of the prompt (and seed). The same input always gives the same bytes.
 */
import { deflateSync } from 'node:zlib'

/** 5x7 glyphs, one string of seven 5-bit rows each; lowercase letters use the capitals. */
const GLYPHS: Record<string, string> = {
  A: '01110 10001 10001 11111 10001 10001 10001',
  B: '11110 10001 10001 11110 10001 10001 11110',
  C: '01110 10001 10000 10000 10000 10001 01110',
  D: '11100 10010 10001 10001 10001 10010 11100',
  E: '11111 10000 10000 11110 10000 10000 11111',
  F: '11111 10000 10000 11110 10000 10000 10000',
  G: '01110 10001 10000 10111 10001 10001 01111',
  H: '10001 10001 10001 11111 10001 10001 10001',
  I: '01110 00100 00100 00100 00100 00100 01110',
  J: '00111 00010 00010 00010 00010 10010 01100',
  K: '10001 10010 10100 11000 10100 10010 10001',
  L: '10000 10000 10000 10000 10000 10000 11111',
  M: '10001 11011 10101 10101 10001 10001 10001',
  N: '10001 10001 11001 10101 10011 10001 10001',
  O: '01110 10001 10001 10001 10001 10001 01110',
  P: '11110 10001 10001 11110 10000 10000 10000',
  Q: '01110 10001 10001 10001 10101 10010 01101',
  R: '11110 10001 10001 11110 10100 10010 10001',
  S: '01111 10000 10000 01110 00001 00001 11110',
  T: '11111 00100 00100 00100 00100 00100 00100',
  U: '10001 10001 10001 10001 10001 10001 01110',
  V: '10001 10001 10001 10001 10001 01010 00100',
  W: '10001 10001 10001 10101 10101 10101 01010',
  X: '10001 10001 01010 00100 01010 10001 10001',
  Y: '10001 10001 10001 01010 00100 00100 00100',
  Z: '11111 00001 00010 00100 01000 10000 11111',
  '0': '01110 10001 10011 10101 11001 10001 01110',
  '1': '00100 01100 00100 00100 00100 00100 01110',
  '2': '01110 10001 00001 00010 00100 01000 11111',
  '3': '11111 00010 00100 00010 00001 10001 01110',
  '4': '00010 00110 01010 10010 11111 00010 00010',
  '5': '11111 10000 11110 00001 00001 10001 01110',
  '6': '00110 01000 10000 11110 10001 10001 01110',
  '7': '11111 00001 00010 00100 01000 01000 01000',
  '8': '01110 10001 10001 01110 10001 10001 01110',
  '9': '01110 10001 10001 01111 00001 00010 01100',
  ' ': '00000 00000 00000 00000 00000 00000 00000',
  '.': '00000 00000 00000 00000 00000 01100 01100',
  ',': '00000 00000 00000 00000 01100 00100 01000',
  '!': '00100 00100 00100 00100 00100 00000 00100',
  '?': '01110 10001 00001 00010 00100 00000 00100',
  '-': '00000 00000 00000 11111 00000 00000 00000',
  ':': '00000 01100 01100 00000 01100 01100 00000',
  "'": '00100 00100 01000 00000 00000 00000 00000',
  '/': '00000 00001 00010 00100 01000 10000 00000',
}
const UNKNOWN_GLYPH = '11111 10001 10001 10001 10001 10001 11111'
const GLYPH_WIDTH = 5
const GLYPH_HEIGHT = 7
/** A glyph's cell: one column and one row of spacing. */
const CELL_WIDTH = GLYPH_WIDTH + 1
const CELL_HEIGHT = GLYPH_HEIGHT + 3

function glyphRows(char: string): number[] {
  const rows = GLYPHS[char.toUpperCase()] ?? UNKNOWN_GLYPH
  return rows.split(' ').map((row) => parseInt(row, 2))
}

/** FNV-1a, 32 bits: a stable hash of the prompt for the colours. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash >>> 0
}

type Rgb = [number, number, number]

function colourOf(hash: number): Rgb {
  return [hash & 0xff, (hash >>> 8) & 0xff, (hash >>> 16) & 0xff]
}

const luminance = ([r, g, b]: Rgb) => 0.2126 * r + 0.7152 * g + 0.0722 * b

/** Words wrapped into lines of at most `width` characters (a longer word is cut). */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    for (let rest = word; rest.length > 0;) {
      const room = line === '' ? width : width - line.length - 1
      if (rest.length <= room) {
        line = line === '' ? rest : `${line} ${rest}`
        rest = ''
      } else if (line !== '') {
        lines.push(line)
        line = ''
      } else {
        lines.push(rest.slice(0, width))
        rest = rest.slice(width)
      }
    }
  }
  if (line !== '') lines.push(line)
  return lines
}

/** Raw RGB pixels (row-major, 3 bytes a pixel) of the prompt drawn at the given size. */
export function renderPrompt(prompt: string, width: number, height: number, seed = 0): Buffer {
  const hash = fnv1a(`${seed}:${prompt}`)
  const top = colourOf(hash)
  const bottom = colourOf(fnv1a(`${hash}`))
  const pixels = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    const t = height === 1 ? 0 : y / (height - 1)
    const row: Rgb = [0, 1, 2].map((i) => Math.round(top[i]! * (1 - t) + bottom[i]! * t)) as Rgb
    for (let x = 0; x < width; x++) pixels.set(row, (y * width + x) * 3)
  }
  const ink: Rgb = luminance(top) + luminance(bottom) > 255 ? [16, 16, 16] : [240, 240, 240]
  // About 24 characters across, at least one pixel a font pixel.
  const scale = Math.max(1, Math.floor(width / (CELL_WIDTH * 24)))
  const margin = 2 * scale
  const columns = Math.max(1, Math.floor((width - 2 * margin) / (CELL_WIDTH * scale)))
  const rows = Math.max(1, Math.floor((height - 2 * margin) / (CELL_HEIGHT * scale)))
  const lines = wrapText(prompt, columns).slice(0, rows)
  lines.forEach((line, lineIndex) => {
    ;[...line].forEach((char, charIndex) => {
      const glyph = glyphRows(char)
      const left = margin + charIndex * CELL_WIDTH * scale
      const topY = margin + lineIndex * CELL_HEIGHT * scale
      glyph.forEach((bits, gy) => {
        for (let gx = 0; gx < GLYPH_WIDTH; gx++) {
          if ((bits & (1 << (GLYPH_WIDTH - 1 - gx))) === 0) continue
          for (let dy = 0; dy < scale; dy++) {
            for (let dx = 0; dx < scale; dx++) {
              const x = left + gx * scale + dx
              const y = topY + gy * scale + dy
              if (x < width && y < height) pixels.set(ink, (y * width + x) * 3)
            }
          }
        }
      })
    })
  })
  return pixels
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

export function crc32(data: Buffer): number {
  let crc = 0xffffffff
  for (const byte of data) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const typeAndData = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(typeAndData))
  return Buffer.concat([length, typeAndData, crc])
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A PNG (8-bit RGB, no interlace) of raw RGB pixels. */
export function encodePng(pixels: Buffer, width: number, height: number): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // colour type: RGB
  const stride = width * 3
  const scanlines = Buffer.alloc((stride + 1) * height)
  for (let y = 0; y < height; y++) {
    // Filter type 0 (none) on every line: the gradient rows are runs that deflate well anyway.
    pixels.copy(scanlines, y * (stride + 1) + 1, y * stride, (y + 1) * stride)
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(scanlines)),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

export function renderPromptPng(prompt: string, width: number, height: number, seed = 0): Buffer {
  return encodePng(renderPrompt(prompt, width, height, seed), width, height)
}
