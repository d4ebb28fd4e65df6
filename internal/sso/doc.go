// Package sso is single sign-on for a site through OpenID Connect (issue 44; docs/design/sso.md): the login
// flow, run by the content agent (`content-agent sso`) off the server's serving path, ending in a signed session
// cookie that the server checks on its own (images/server/src/guard/session.rs) with one HMAC and a clock compare.
//
// The contract with the server (held by the contract test in server_test.go, which runs the real binary):
//
//   - Cookie `hs_session=1|<exp>|<email>|<groups>|<mac>`, Path=/, HttpOnly, SameSite=Lax, Secure on an https
//     site: exp the expiry in Unix seconds; email the ID token's verified e-mail, lowercased (empty when the IdP
//     does not say it is verified); groups the token's groups joined by ':'; mac the unpadded base64url
//     HMAC-SHA256 of everything before the last '|' under the first session key.
//   - Values are escaped: A-Z a-z 0-9 . _ @ - as themselves, any other byte as %XX (uppercase hex).
//   - Keys file: one or two lines of standard base64 (32 to 64 bytes each); the agent signs with the first, the
//     server accepts either, so a rotation is "new key first, old key second", then "new key alone" once the old
//     cookies expired. The agent reads the file at every login, so a rotation needs no restart.
//
// The flow (RFC 6749 authorization code with RFC 7636 PKCE, OpenID Connect Core 1.0):
//
//	GET  <prefix>/login?rd=/page    → 302 to the IdP (state, nonce, S256 code challenge); the flow's secrets in a
//	                                  signed, 10-minute cookie named after the state (parallel logins coexist)
//	GET  <prefix>/callback?code&state → the state's flow cookie checked; the code exchanged with the verifier; the
//	                                  ID token verified (the IdP's keys, issuer, audience, expiry, nonce); the
//	                                  session cookie set; 302 back to the site URL + rd
//	GET|POST <prefix>/logout?rd=/   → the session cookie cleared; 302 to rd (a page that shows "signed out")
//
// rd is only ever a path on the site (starting with one '/', never "//" or "/\"): the agent is no open redirect.
package sso
