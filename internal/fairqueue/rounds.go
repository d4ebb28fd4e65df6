package fairqueue

import (
	"container/list"
	"slices"
)

// rounds holds the ready keys: for each class (a priority, and within it the keys added without a delay before
// the retries, as controller-runtime's priority queue orders them), the lanes that have ready keys in the order of
// their turns, and each lane's keys in the order they became ready. Taking a key takes the first lane's first key
// of the first class and sends that lane to the back of its round; a lane without keys leaves it. Not safe for
// concurrent use (the Queue's lock).
type rounds[T comparable] struct {
	classes []class             // those with ready keys, first served first
	levels  map[class]*round[T] // by class
}

// class is the order of service between rounds: the higher priority first, then the keys added without a delay.
type class struct {
	priority int
	retry    bool // the key became ready after a delay (After, RateLimited) and was not added since without one
}

// before orders classes: negative when a is served before b.
func before(a, b class) int {
	if a.priority != b.priority {
		return b.priority - a.priority
	}
	switch {
	case a.retry == b.retry:
		return 0
	case b.retry:
		return -1
	default:
		return 1
	}
}

// round is one priority's lanes in turn.
type round[T comparable] struct {
	order list.List // of *lane[T], the next to serve first
	lanes map[string]*lane[T]
}

type lane[T comparable] struct {
	name  string
	keys  list.List     // of *entry[T]
	place *list.Element // in the round's order
}

// turnSlot is where an entry waits: its lane in its class's round.
type turnSlot[T comparable] struct {
	class class
	round *round[T]
	lane  *lane[T]
	at    *list.Element
}

func newRounds[T comparable]() rounds[T] {
	return rounds[T]{levels: map[class]*round[T]{}}
}

// push puts e at the back of its lane in its class's round; the lane joins the back of the round if it was not in
// it.
func (r *rounds[T]) push(e *entry[T]) {
	c := class{priority: e.priority, retry: e.retry}
	rd := r.levels[c]
	if rd == nil {
		rd = &round[T]{lanes: map[string]*lane[T]{}}
		r.levels[c] = rd
		i, _ := slices.BinarySearchFunc(r.classes, c, before)
		r.classes = slices.Insert(r.classes, i, c)
	}
	ln := rd.lanes[e.lane]
	if ln == nil {
		ln = &lane[T]{name: e.lane}
		rd.lanes[e.lane] = ln
		ln.place = rd.order.PushBack(ln)
	}
	e.turn = &turnSlot[T]{class: c, round: rd, lane: ln, at: ln.keys.PushBack(e)}
}

// pop takes the next key in turn: from the first class with ready keys, the first lane's first key. Nil when no
// key is ready.
func (r *rounds[T]) pop() *entry[T] {
	if len(r.classes) == 0 {
		return nil
	}
	rd := r.levels[r.classes[0]]
	ln := rd.order.Front().Value.(*lane[T])
	e := ln.keys.Front().Value.(*entry[T])
	r.remove(e)
	if ln.keys.Len() > 0 {
		rd.order.MoveToBack(ln.place)
	}
	return e
}

// remove takes e out of its lane, wherever it is; an emptied lane leaves its round, an emptied round its class.
func (r *rounds[T]) remove(e *entry[T]) {
	s := e.turn
	e.turn = nil
	s.lane.keys.Remove(s.at)
	if s.lane.keys.Len() > 0 {
		return
	}
	s.round.order.Remove(s.lane.place)
	delete(s.round.lanes, s.lane.name)
	if s.round.order.Len() > 0 {
		return
	}
	delete(r.levels, s.class)
	r.classes = slices.DeleteFunc(r.classes, func(c class) bool { return c == s.class })
}
