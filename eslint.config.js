// Lint: typescript-eslint's type-checked rules about promises — a promise nobody awaits or
// catches (its rejection is lost, or crashes the process), a promise where a plain value is
// expected (a void callback, a condition), an await of something that is not one — and no
// explicit `any`, over the service, its tests, the benchmarks and the console.

import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'coverage/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // No `any` anywhere but where a test says why (a JSON answer read loosely).
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { parser: tseslint.parser, parserOptions: { project: './console/tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // No `any` anywhere but where a test says why (a JSON answer read loosely).
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
);
