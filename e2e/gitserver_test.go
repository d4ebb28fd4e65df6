//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// The Git server of the content-from-Git scenarios (issue 30): e2e/cmd/gitserver (go-git's server side, FROM
// scratch, nothing pulled) as a one-pod Deployment in its own namespace, serving the same bare repositories over
// HTTPS (a certificate of the test's own CA, HTTP basic auth: a private forge with an internal CA) and SSH (the
// test's host key, one authorised client key). Its namespace and name are fixed because the operator's tenancy
// policy must allow its URLs when the chart is installed (helmInstallArgs, tenancy.git.urls).
const (
	gitNamespace = "e2e-gitserver"
	gitName      = "gitserver"
	gitHost      = gitName + "." + gitNamespace + ".svc.cluster.local"
	// Service ports are the protocols' defaults, so the URLs and the known_hosts line carry no port.
	gitHTTPSPort = 443
	gitSSHPort   = 22
	gitUsername  = "e2e"
	// The container's ports (user 65532 cannot bind below 1024).
	gitHTTPSListen = 8443
	gitSSHListen   = 2222
)

// gitRepos are created empty by the server at each start (-init): its repositories live in an emptyDir, so a new
// pod starts with none, like a forge restored empty; the test pushes its history again (gitRepo.repush).
var gitRepos = []string{"site.git", "pydocs.git"}

// gitURLPrefixes are what the chart's tenancy policy allows for Git content in the suite (helmInstallArgs).
var gitURLPrefixes = []string{"https://" + gitHost + "/", "ssh://git@" + gitHost + "/", "http://" + poolGitHost + "/"}

// gitServer is the deployed server and what a client needs to reach it.
type gitServer struct {
	caPEM      []byte // the test CA: a site's Secret key ca.crt, and the pushes' trust
	password   string // HTTP basic auth, user gitUsername
	clientPEM  []byte // the SSH client key: a site's Secret key identity
	knownHosts []byte // the server's host key as a known_hosts line: a site's Secret key known_hosts
	https      *portForward
}

// httpsURL and sshURL are a repository's addresses inside the cluster (what a site's spec.content.git.url says).
func httpsURL(repo string) string { return "https://" + gitHost + "/" + repo }
func sshURL(repo string) string   { return "ssh://git@" + gitHost + "/" + repo }

func gitServerImage() string {
	if v := os.Getenv("E2E_GITSERVER_IMAGE"); v != "" {
		return v
	}
	return "hyperstatic/e2e-gitserver:" + cfg.version
}

// deployGitServer starts the Git server with fresh keys and a fresh password, waits until it accepts
// connections, and forwards a loopback port to its HTTPS port for the test's pushes. The namespace is deleted when
// the test ends.
func deployGitServer(t *testing.T) *gitServer {
	t.Helper()
	ctx := ctxFor(t, 5*time.Minute)
	// A namespace left by an interrupted run is not trusted: delete it and start clean.
	deleteNamespace(t, gitNamespace)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gitNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace %s: %v", gitNamespace, err)
	}
	t.Cleanup(func() { deleteNamespace(t, gitNamespace) })

	ca := testcerts.NewCA(t)
	// localhost: the test pushes through a loopback port-forward (testcerts makes DNS names only, so not 127.0.0.1).
	cert, key := ca.Issue(t, testcerts.Options{}, gitHost, gitName+"."+gitNamespace+".svc", "localhost")
	keys := gittestserver.NewSSHKeys(t)
	g := &gitServer{
		caPEM:      ca.PEM,
		password:   randomToken(t),
		clientPEM:  keys.ClientPEM,
		knownHosts: []byte(knownhosts.Line([]string{knownhosts.Normalize(gitHost)}, keys.Host.PublicKey()) + "\n"),
	}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gitNamespace, Name: gitName + "-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gitNamespace, Name: gitName}, Data: map[string][]byte{
			"GIT_USERNAME":           []byte(gitUsername),
			"GIT_PASSWORD":           []byte(g.password),
			"GIT_SSH_HOST_KEY":       keys.HostPEM,
			"GIT_SSH_AUTHORIZED_KEY": ssh.MarshalAuthorizedKey(keys.Authorized),
		}},
		gitServerService(),
		gitServerDeployment(),
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	start := time.Now()
	waitGitServerRolledOut(t)
	t.Logf("Git server %s ready %s after its creation (repositories %s)", gitHost, time.Since(start).Round(100*time.Millisecond), strings.Join(gitRepos, ", "))
	g.https = startPortForward(t, gitNamespace, "svc/"+gitName, gitHTTPSPort)
	return g
}

// gitServerDeployment runs one pod (Recreate: a restart never has two servers with different passwords).
// Credentials come from the Secret as environment variables, never as flags (a pod's arguments are readable by
// anyone who may get pods). No CPU limit: a 67 MB push must not be throttled into the measurement.
func gitServerDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": gitName}
	env := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: gitName}, Key: name}}}
	}
	c := restrictedContainer(gitName, gitServerImage(),
		"-listen", fmt.Sprintf(":%d", gitHTTPSListen), "-tls-cert", "/tls/tls.crt", "-tls-key", "/tls/tls.key",
		"-ssh-listen", fmt.Sprintf(":%d", gitSSHListen), "-repos", "/repos", "-init", strings.Join(gitRepos, ","))
	c.Env = []corev1.EnvVar{env("GIT_USERNAME"), env("GIT_PASSWORD"), env("GIT_SSH_HOST_KEY"), env("GIT_SSH_AUTHORIZED_KEY")}
	c.Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: gitHTTPSListen}, {Name: "ssh", ContainerPort: gitSSHListen}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "repos", MountPath: "/repos"}, {Name: "tls", MountPath: "/tls", ReadOnly: true}}
	c.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("https")}},
		PeriodSeconds: 1}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: gitNamespace, Name: gitName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{c},
					Volumes: []corev1.Volume{
						{Name: "repos", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
						{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: gitName + "-tls"}}},
					},
				},
			},
		},
	}
}

func gitServerService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: gitNamespace, Name: gitName},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": gitName},
			Ports: []corev1.ServicePort{
				{Name: "https", Port: gitHTTPSPort, TargetPort: intstr.FromString("https")},
				{Name: "ssh", Port: gitSSHPort, TargetPort: intstr.FromString("ssh")},
			},
		},
	}
}

// waitGitServerRolledOut waits until the Deployment's current template runs in exactly one Ready pod and no
// other pod is left (Recreate: the old pod goes first).
func waitGitServerRolledOut(t *testing.T) {
	t.Helper()
	eventually(t, 2*time.Minute, "Git server rolled out", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: gitNamespace, Name: gitName}, d); err != nil {
			return false, err.Error(), nil
		}
		pods, err := cs.CoreV1().Pods(gitNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + gitName})
		if err != nil {
			return false, err.Error(), nil
		}
		ready := 0
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil && podstate.Ready(&pods.Items[i]) {
				ready++
			}
		}
		st := d.Status
		why := fmt.Sprintf("generation %d observed %d, updated %d ready %d, %d pods (%d ready)",
			d.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.ReadyReplicas, len(pods.Items), ready)
		return st.ObservedGeneration == d.Generation && st.UpdatedReplicas == 1 && st.ReadyReplicas == 1 &&
			len(pods.Items) == 1 && ready == 1, why, nil
	})
}

// restartWithPassword gives the server a new password and restarts it (a new pod: its repositories are empty
// again, see gitRepos), then starts the loopback forward again. It returns when the new pod accepts connections.
func (g *gitServer) restartWithPassword(t *testing.T, password string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	sec := &corev1.Secret{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: gitNamespace, Name: gitName}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["GIT_PASSWORD"] = []byte(password)
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatalf("update the Git server's Secret: %v", err)
	}
	// Environment variables are read at container start: a new pod takes the new password.
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: gitNamespace, Name: gitName}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["e2e.hyperstatic.dev/restarted-at"] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatalf("restart the Git server: %v", err)
	}
	start := time.Now()
	waitGitServerRolledOut(t)
	g.password = password
	g.https.restart(t)
	t.Logf("Git server restarted with a new password in %s", time.Since(start).Round(100*time.Millisecond))
}

// randomToken is a fresh secret: 24 random bytes, hex.
func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// gitSecret creates a Secret of the sites' namespace in the keys Flux's GitRepository reads (a webhook token).
func gitSecret(t *testing.T, ns, name string, data map[string][]byte) *corev1.Secret {
	t.Helper()
	return createGitSecret(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data})
}

// gitCredentials is gitSecret for credentials: labelled as meant for them, as the default tenancy policy requires
// of a spec.content.git.secretRef (docs/security.md).
func gitCredentials(t *testing.T, ns, name string, data map[string][]byte) *corev1.Secret {
	t.Helper()
	return createGitSecret(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{v1alpha1.LabelGitCredentials: "true"}}, Data: data})
}

func createGitSecret(t *testing.T, s *corev1.Secret) *corev1.Secret {
	t.Helper()
	if err := k8s.Create(ctxFor(t, 30*time.Second), s); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create Secret %s: %v", s.Name, err)
	}
	return s
}

// httpsCredentials and sshCredentials are a site's Secret data for this server.
func (g *gitServer) httpsCredentials() map[string][]byte {
	return map[string][]byte{"username": []byte(gitUsername), "password": []byte(g.password), "ca.crt": g.caPEM}
}

func (g *gitServer) sshCredentials() map[string][]byte {
	return map[string][]byte{"identity": g.clientPEM, "known_hosts": g.knownHosts}
}
