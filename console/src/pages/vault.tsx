export function VaultPage() {
  return <section><h1>VaultPage</h1></section>;
}
