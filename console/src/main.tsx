// Entry point of the web console: mounts the app. Everything the page runs comes from files
// the control API serves (no inline script), under a strict Content-Security-Policy.

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
