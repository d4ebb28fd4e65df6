package htpasswd

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestCheck(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := "# team\n\nalice:" + string(h) + "\nbob:" + strings.Replace(string(h), "$2a$", "$2y$", 1) + "\n"
	if n, err := Check([]byte(good)); err != nil || n != 2 {
		t.Fatalf("good file: %d users, %v", n, err)
	}
	for _, c := range []struct{ text, want string }{
		{"carol:$apr1$x$y", "line 1: not a bcrypt hash"},
		{"\ndave:{SHA}abc=", "line 2: not a bcrypt hash"},
		{"nocolon", "line 1: expected user:hash"},
		{"erin:$2y$10$short", "line 1: bad bcrypt hash"},
		{"frank:$2y$15$L6Bc/AlTQHyd9liGgGEZyOFLPHNgyxeEPfgYfBCVxJ7JIlwxyVU3u", "line 1: bcrypt cost 15 is above 14"},
		{"alice:" + string(h) + "\nalice:" + string(h), "line 2: a user appears twice"},
	} {
		_, err := Check([]byte(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "carol") || strings.Contains(err.Error(), "$")) {
			t.Errorf("%q: the message shows the file's content: %v", c.text, err)
		}
	}
}
