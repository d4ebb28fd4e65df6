package fairqueue

import (
	"container/list"
	"slices"
)

// rounds holds the ready keys: for each priority, the lanes that have ready keys in the order of their turns, and
// each lane's keys in the order they became ready. Taking a key takes the first lane's first key and sends that
// lane to the back of the round; a lane without keys leaves it. Not safe for concurrent use (the Queue's lock).
type rounds[T comparable] struct {
	priorities []int             // those with ready keys, highest first
	levels     map[int]*round[T] // by priority
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

// turnSlot is where an entry waits: its lane in its priority's round.
type turnSlot[T comparable] struct {
	round *round[T]
	lane  *lane[T]
	at    *list.Element
}

func newRounds[T comparable]() rounds[T] {
	return rounds[T]{levels: map[int]*round[T]{}}
}

// push puts e at the back of its lane in its priority's round; the lane joins the back of the round if it was not
// in it.
func (r *rounds[T]) push(e *entry[T]) {
	rd := r.levels[e.priority]
	if rd == nil {
		rd = &round[T]{lanes: map[string]*lane[T]{}}
		r.levels[e.priority] = rd
		i, _ := slices.BinarySearchFunc(r.priorities, e.priority, func(have, want int) int { return want - have })
		r.priorities = slices.Insert(r.priorities, i, e.priority)
	}
	ln := rd.lanes[e.lane]
	if ln == nil {
		ln = &lane[T]{name: e.lane}
		rd.lanes[e.lane] = ln
		ln.place = rd.order.PushBack(ln)
	}
	e.turn = &turnSlot[T]{round: rd, lane: ln, at: ln.keys.PushBack(e)}
}

// pop takes the next key in turn: from the highest priority with ready keys, the first lane's first key. Nil when
// no key is ready.
func (r *rounds[T]) pop() *entry[T] {
	if len(r.priorities) == 0 {
		return nil
	}
	rd := r.levels[r.priorities[0]]
	ln := rd.order.Front().Value.(*lane[T])
	e := ln.keys.Front().Value.(*entry[T])
	r.remove(e)
	if ln.keys.Len() > 0 {
		rd.order.MoveToBack(ln.place)
	}
	return e
}

// remove takes e out of its lane, wherever it is; an emptied lane leaves its round, an emptied round its priority.
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
	delete(r.levels, e.priority)
	r.priorities = slices.DeleteFunc(r.priorities, func(p int) bool { return p == e.priority })
}
