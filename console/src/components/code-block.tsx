import { CopyButton } from './copy-button'

/** A snippet to copy: the text, and a button that copies it. */
export function CodeBlock({ label, code }: { label: string; code: string }) {
  return (
    <figure className="code-block">
      <figcaption>
        <span>{label}</span>
        <CopyButton text={code} label={`Copy ${label}`} />
      </figcaption>
      <pre tabIndex={0} aria-label={label}>
        <code>{code}</code>
      </pre>
    </figure>
  )
}
