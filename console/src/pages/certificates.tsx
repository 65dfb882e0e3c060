export function CertificatesPage() {
  return <section><h1>CertificatesPage</h1></section>;
}
