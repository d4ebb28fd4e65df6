package gittestserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
)

// SSHConfig is the server side of SSH: its host key and the one client key it accepts (any user name: forges
// take "git@" and tell users apart by key).
func SSHConfig(hostKey ssh.Signer, authorized ssh.PublicKey) *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), authorized.Marshal()) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("key not authorized")
		},
	}
	cfg.AddHostKey(hostKey)
	return cfg
}

// ServeSSH serves Git over SSH on l until it is closed: `git-upload-pack '<repo>'` and `git-receive-pack
// '<repo>'` exec requests, with the same repositories, depth handling and reachability rule as over HTTP.
func (s *Server) ServeSSH(l net.Listener, cfg *ssh.ServerConfig) error {
	for {
		conn, err := l.Accept()
		if err != nil {
			return err
		}
		go s.sshConn(conn, cfg)
	}
}

func (s *Server) sshConn(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return // a refused key or a broken handshake: the client sees it
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.sshSession(ch, requests)
	}
}

// sshSession runs the first exec request of a session and answers the others with false (no shell, no env).
func (s *Server) sshSession(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		cmd := execCommand(req.Payload)
		_ = req.Reply(true, nil)
		status := s.runGit(ch, cmd)
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
		return
	}
}

// execCommand decodes an exec request's payload (an SSH string).
func execCommand(payload []byte) string {
	if len(payload) < 4 {
		return ""
	}
	n := binary.BigEndian.Uint32(payload)
	if int(n) > len(payload)-4 {
		return ""
	}
	return string(payload[4 : 4+n])
}

// runGit runs `git-upload-pack '/repo'` or `git-receive-pack '/repo'` over the channel; it returns the exit
// status. Errors go to stderr in git's words, which go-git's client recognises ("does not appear to be a git
// repository" is its not-found).
func (s *Server) runGit(ch ssh.Channel, cmd string) uint32 {
	service, arg, _ := strings.Cut(cmd, " ")
	repo := strings.Trim(arg, "'")
	if service != transport.UploadPackServiceName && service != transport.ReceivePackServiceName ||
		strings.Contains(repo, "..") || repo == "" {
		fmt.Fprintf(ch.Stderr(), "fatal: unsupported command %q\n", cmd)
		return 128
	}
	ep := &transport.Endpoint{Path: path.Clean("/" + repo)}
	ctx := context.Background()
	ar, err := s.advertisedRefs(ctx, ep, service)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", repo)
		return 128
	}
	if err := ar.Encode(ch); err != nil {
		return 128
	}
	in := bufio.NewReader(io.LimitReader(ch, maxPushBytes))
	// A client that only listed the refs says so with a flush and goes.
	if head, err := in.Peek(4); err != nil || string(head) == "0000" {
		return 0
	}
	if service == transport.ReceivePackServiceName {
		req := packp.NewReferenceUpdateRequest()
		if err := req.Decode(in); err != nil {
			fmt.Fprintf(ch.Stderr(), "fatal: decoding the push: %v\n", err)
			return 128
		}
		status, err := s.applyPush(ctx, ep, req)
		if status != nil {
			_ = status.Encode(ch)
		}
		if err != nil {
			log.Printf("push to %s: %v", repo, err)
			return 1
		}
		return 0
	}
	// Stateful (protocol v0 over a connection): the shallow lines go out as soon as the wants are read, each have
	// and flush is answered as it comes (negotiate.go), and "done" gets its answer and the packfile.
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(in); err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: decoding the upload request: %v\n", err)
		return 128
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	up, err := s.prepare(ep, req)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	if up.refuse(ch) || up.writeShallows(ch) != nil {
		return 128
	}
	n := up.negotiation()
	done, err := readHaves(pktline.NewScanner(in), func(l haveLine) error { return n.answer(ch, l) })
	if err != nil || !done {
		return 128
	}
	up.writePack(ch, n)
	return 0
}
