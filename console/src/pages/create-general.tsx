// Placeholder replaced by the create form.
export function CreateGeneralPage() {
  return <section><h1>Create</h1></section>;
}
