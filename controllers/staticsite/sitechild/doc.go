// Package sitechild holds the conventions every object the operator makes for a StaticSite follows, whichever
// package builds it (desired, gitcontent, capacitygate): the labels that mark and select a site's objects, the
// owner reference that lets the garbage collector delete them with the site, the field manager of every apply, the
// names and user the server pod's parts go by (which the Git puller and the capacity measurement must match), and
// the way a duration is written on a command line. Pure values and functions of the site: it imports nothing of the
// operator but the API, so every package of the controller can import it and none of them derives these again.
package sitechild
