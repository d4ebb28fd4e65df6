package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// events is what quic-go's qlog told about the connections of one case, reduced to what the cases assert on. It
// is the qlog trace (and its recorder) of every connection the case dials: quic-go builds no qlog event at all
// for a connection without a tracer, so only the cases that read these pay for them.
type events struct {
	mu          sync.Mutex
	retries     int      // Retry packets received
	zeroRTTSent int      // 0-RTT packets sent
	keyUpdates  []string // 1-RTT key updates after the first keys: "local_update phase 1", ...
	ecnStates   []string // quic-go's ECN validation states, in order
	ecnMarked   int      // packets received marked ECN-capable or congestion-experienced
}

func (e *events) tracer() func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	return func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return e }
}

func (e *events) AddProducer() qlogwriter.Recorder { return e }

// SupportsSchemas is false for HTTP/3's qlog schema: its events are not needed here.
func (e *events) SupportsSchemas(schema string) bool { return schema == qlog.EventSchema }

func (e *events) Close() error { return nil }

func (e *events) RecordEvent(ev qlogwriter.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch v := ev.(type) {
	case qlog.PacketReceived:
		if v.Header.PacketType == qlog.PacketTypeRetry {
			e.retries++
		}
		if v.ECN == qlog.ECT0 || v.ECN == qlog.ECT1 || v.ECN == qlog.ECNCE {
			e.ecnMarked++
		}
	case qlog.PacketSent:
		if v.Header.PacketType == qlog.PacketType0RTT {
			e.zeroRTTSent++
		}
	case qlog.KeyUpdated:
		if v.Trigger != qlog.KeyUpdateTLS && v.KeyType == qlog.KeyTypeClient1RTT {
			e.keyUpdates = append(e.keyUpdates, fmt.Sprintf("%s phase %d", v.Trigger, v.KeyPhase))
		}
	case qlog.ECNStateUpdated:
		e.ecnStates = append(e.ecnStates, string(v.State))
	}
}

// snapshot copies the counts for reading while connections may still record.
func (e *events) snapshot() events {
	e.mu.Lock()
	defer e.mu.Unlock()
	return events{retries: e.retries, zeroRTTSent: e.zeroRTTSent, keyUpdates: append([]string(nil), e.keyUpdates...),
		ecnStates: append([]string(nil), e.ecnStates...), ecnMarked: e.ecnMarked}
}
