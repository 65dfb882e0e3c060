export function DeploymentListPage() {
  return <section><h1>DeploymentListPage</h1></section>;
}
