// Share 3 of 3 of the doc-test's pages (test/helpers/doctest.ts).
import { docTest } from '../helpers/doctest.js'

docTest(3, 3)
