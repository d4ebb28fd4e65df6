package staticsite

import (
	"strconv"
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// corsArg is one --cors value of the server: GLOB=ORIGIN,ORIGIN[;methods=M,M][;headers=H,H][;max-age=SECONDS].
// The CRD keeps '=' out of globs and ',' and ';' out of origins, methods and header names, so the pieces cannot
// run into each other.
func corsArg(c v1alpha1.CORSRule) string {
	var b strings.Builder
	b.WriteString(c.Glob)
	b.WriteString("=")
	b.WriteString(strings.Join(c.AllowOrigins, ","))
	if len(c.AllowMethods) > 0 {
		b.WriteString(";methods=" + strings.Join(c.AllowMethods, ","))
	}
	if len(c.AllowHeaders) > 0 {
		b.WriteString(";headers=" + strings.Join(c.AllowHeaders, ","))
	}
	if c.MaxAge != nil {
		b.WriteString(";max-age=" + strconv.Itoa(int(*c.MaxAge)))
	}
	return b.String()
}
