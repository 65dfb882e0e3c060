export function ServiceAccountsPage() {
  return <section><h1>ServiceAccountsPage</h1></section>;
}
