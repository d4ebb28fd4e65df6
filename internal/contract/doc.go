// Package contract holds the tests that tie the operator's Go code to the real hyperstatic-server binary
// (images/server), the two sides of an interface no compiler checks:
//
//   - the command line and the site value: every argument list desired.ServerArgs can build, with the site
//     value internal/sitevalue renders for the same site as its --site file, must be accepted by the server, which
//     must name the value with the operator's revision (serverargs_test.go, tlsargs_test.go, run as
//     `hyperstatic-server --check ARGS... --site FILE`; a binary older than --site skips them, saying so);
//   - the admin port: every metric name and label internal/podmetrics reads, the probe paths of the server
//     container and the /content list the benchmark controller reads must be what the running server serves
//     (metrics_test.go).
//
// A flag or metric renamed on one side only fails these tests. They run the binary serverbin finds or builds
// (`make go-test` builds it and sets HYPERSTATIC_SERVER_BIN); they need no cluster and no envtest, which is why
// they live here rather than in controllers/staticsite, whose TestMain starts an API server.
//
// The package has no code of its own: it exists for its tests.
package contract
