/** A USD amount for people: `$12.50`, `-$3.00`; what rounds to zero cents is `$0.00`, never `-$0.00`. */
export function formatUsd(amount: number): string {
  const cents = Math.round(amount * 100)
  return `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`
}
