import js from '@eslint/js'
import reactHooks from 'eslint-plugin-react-hooks'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    ignores: [
      '**/dist/',
      'node_modules/',
      '.podyard/',
      'coverage/',
      'bench/jobs/profiles/',
      'console/src/api/generated/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', fetch: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // A file a reader can hold in their head: every file, tests included, stays within 600
    // lines, blank lines and comments included (docs/architecture.md, "Style"); generated code
    // is ignored above.
    rules: { 'max-lines': ['error', { max: 600 }] },
  },
  {
    files: ['**/*.test.ts', 'test/**', 'bench/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { module: 'writable', require: 'readonly' },
    },
  },
  {
    // The web console (console/src) is React: hooks are called unconditionally and list what
    // they read.
    files: ['console/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  {
    files: ['src/cli/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
)
