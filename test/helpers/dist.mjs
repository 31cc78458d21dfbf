// A module of the library as `npm run build` wrote it (dist/lib/), for the
// helper scripts the tests start as processes of their own: each loads only
// the modules it uses, not the whole library (dist/lib/index.js, etcd3
// included), and starts in a fraction of the time.
export const dist = (m) => import(new URL(`../../dist/lib/${m}`, import.meta.url).href)
