package fairqueue

import "container/heap"

// waitHeap holds the delayed keys, the earliest ready time at the top; each entry keeps its index (heapAt) so that
// an earlier time or readiness moves or removes it in place.
type waitHeap[T comparable] struct{ h entries[T] }

func (w *waitHeap[T]) Len() int { return len(w.h) }

func (w *waitHeap[T]) push(e *entry[T]) { heap.Push(&w.h, e) }

func (w *waitHeap[T]) fix(e *entry[T]) { heap.Fix(&w.h, e.heapAt) }

func (w *waitHeap[T]) remove(e *entry[T]) { heap.Remove(&w.h, e.heapAt) }

// peek is the entry ready first, nil when none waits.
func (w *waitHeap[T]) peek() *entry[T] {
	if len(w.h) == 0 {
		return nil
	}
	return w.h[0]
}

// entries is container/heap's view of the waiting keys.
type entries[T comparable] []*entry[T]

func (h entries[T]) Len() int { return len(h) }

// Less: the earlier ready time first; of two keys ready at the same time, the one queued first.
func (h entries[T]) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].seq < h[j].seq
}

func (h entries[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}

func (h *entries[T]) Push(x any) {
	e := x.(*entry[T])
	e.heapAt = len(*h)
	*h = append(*h, e)
}

func (h *entries[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapAt = -1
	return e
}
