// Placeholder replaced by the create form.
export function CreateOrchestratedPage() {
  return <section><h1>Create</h1></section>;
}
