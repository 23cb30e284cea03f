import { useState } from 'react'

/**
 * Copies `text`. `navigator.clipboard` exists only in secure contexts (HTTPS or localhost);
 * over plain HTTP on another host name the console falls back to a selected text area and
 * `execCommand('copy')`, which every browser still honours from a click.
 */
async function copy(text: string): Promise<boolean> {
  if (window.isSecureContext && navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text)
      return true
    } catch {
      // fall through to the older way
    }
  }
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.className = 'offscreen'
  document.body.appendChild(area)
  area.select()
  try {
    return document.execCommand('copy')
  } finally {
    area.remove()
  }
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')
  return (
    <button
      type="button"
      className="button small"
      onClick={async () => {
        setState((await copy(text)) ? 'copied' : 'failed')
        setTimeout(() => setState('idle'), 2000)
      }}
    >
      {label}
      <span aria-live="polite" className="copy-state">
        {state === 'copied' ? ' ✓ copied' : state === 'failed' ? ' (select and copy by hand)' : ''}
      </span>
    </button>
  )
}
