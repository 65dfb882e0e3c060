export function ClustersPage() {
  return <section><h1>ClustersPage</h1></section>;
}
