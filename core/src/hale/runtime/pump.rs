//! The exposure pump: the one loop that takes an [`Exposure`]'s events and
//! hands each to the driver that owns it, feeding back the inputs the
//! events' answers make.
//!
//! The server's owner, the deterministic replay (its world and its hub) and
//! the C ABI all drive an exposure the same way; what differs is only what
//! they do with each event, which is an [`ExposureDriver`]. The rules that
//! turn a driver's answer into the exposure's next input live here, once:
//!
//! | event                 | driver's answer            | input fed back               |
//! |-----------------------|----------------------------|------------------------------|
//! | [`Event::Deliver`]    | —                          | —                            |
//! | [`Event::Dispatch`]   | [`Handed::Taken`]          | —                            |
//! |                       | [`Handed::NotTaken`]       | [`Input::DispatchNotTaken`]  |
//! | [`Event::Ask`]        | [`Answer::Born`]`(stamp)`  | [`Input::ReceiverBorn`]      |
//! |                       | [`Answer::Absent`]         | [`Input::ReceiverAbsent`]    |
//! |                       | [`Answer::Later`]          | — (the driver feeds it)      |
//! | [`Event::Recall`]     | `true` (taken back)        | [`Input::Recalled`]          |
//! |                       | `false` (declined)         | — (its completion follows)   |
//! | [`Event::CloseConnection`] | —                     | —                            |
//! | [`Event::StopListening`]   | —                     | —                            |
//!
//! Call order: one [`step`] polls one event, calls the driver's method for
//! it, and feeds the answer's input (through [`Exposure::handle_input`])
//! before it returns, so the events that input makes queue behind those
//! already waiting; [`pump`] steps until the exposure is quiet. A driver
//! never calls back into the exposure from inside a method (the pump holds
//! it): a call that runs at once (an inline receiver, the replay's
//! handlers) is queued by `dispatch` and run after `pump` returns, its
//! completion fed as an input and the exposure pumped again.

use super::exposure::{
    Correlation, Delivery, Dispatch, Event, Exposure, Input, ReceiverId, RequestId,
};
use crate::Timestamp;

/// Whether a dispatched call was handed to its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handed {
    /// The receiver has it (running, queued to run, or held at a gate):
    /// its completion follows.
    Taken,
    /// It could not be handed (the receiver's thread is gone): it never
    /// runs, and the pump feeds [`Input::DispatchNotTaken`].
    NotTaken,
}

/// A driver's answer to [`Event::Ask`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The receiver is there, with the incarnation stamp: the pump feeds
    /// [`Input::ReceiverBorn`].
    Born(u64),
    /// Nobody answers for it: the pump feeds [`Input::ReceiverAbsent`].
    Absent,
    /// The driver answers later with an input of its own (the C ABI, whose
    /// caller asks the receiver itself).
    Later,
}

/// What a driver does with each of an exposure's events. See the module
/// documentation for the inputs each answer feeds back. No method may call
/// into the exposure: [`pump`] holds it.
pub trait ExposureDriver {
    /// Encode and write an outcome ([`Event::Deliver`]).
    fn deliver(&mut self, delivery: Delivery);

    /// Hand a call to its receiver ([`Event::Dispatch`]); a call run at
    /// once is queued here and run after the pump returns.
    fn dispatch(&mut self, dispatch: Box<Dispatch>) -> Handed;

    /// Whether `receiver` is there, and as which incarnation
    /// ([`Event::Ask`]).
    fn ask(&mut self, receiver: ReceiverId) -> Answer;

    /// Take back the call `request_id` handed ahead to `receiver` if it has
    /// not started ([`Event::Recall`]); `true` when taken back (it must then
    /// never start). Declining is always correct — the call runs and its
    /// completion follows — so by default a driver declines.
    fn recall(&mut self, receiver: ReceiverId, request_id: RequestId) -> bool {
        let _ = (receiver, request_id);
        false
    }

    /// The runtime has finished with this connection
    /// ([`Event::CloseConnection`]).
    fn close_connection(&mut self, correlation: Correlation);

    /// Shutdown is done: release the listener ([`Event::StopListening`]).
    fn stop_listening(&mut self);
}

/// Acts on the exposure's next event, if any: the driver's method for it,
/// then the input its answer makes, at `now`. Returns whether there was an
/// event. For a caller that takes events one at a time (the C ABI's
/// `limen_exposure_poll_event`); others [`pump`].
pub fn step(exposure: &mut Exposure, now: Timestamp, driver: &mut impl ExposureDriver) -> bool {
    let Some(event) = exposure.poll_event() else {
        return false;
    };
    let input = match event {
        Event::Deliver(delivery) => {
            driver.deliver(delivery);
            None
        }
        Event::Dispatch(dispatch) => {
            let request_id = dispatch.request_id;
            match driver.dispatch(dispatch) {
                Handed::Taken => None,
                Handed::NotTaken => Some(Input::DispatchNotTaken(request_id)),
            }
        }
        Event::Ask(receiver) => match driver.ask(receiver) {
            Answer::Born(stamp) => Some(Input::ReceiverBorn { receiver, stamp }),
            Answer::Absent => Some(Input::ReceiverAbsent(receiver)),
            Answer::Later => None,
        },
        Event::Recall {
            receiver,
            request_id,
        } => driver
            .recall(receiver, request_id)
            .then_some(Input::Recalled(request_id)),
        Event::CloseConnection(correlation) => {
            driver.close_connection(correlation);
            None
        }
        Event::StopListening => {
            driver.stop_listening();
            None
        }
    };
    if let Some(input) = input {
        exposure.handle_input(now, input);
    }
    true
}

/// Acts on every event of the exposure until it is quiet ([`step`] until it
/// finds none), feeding back each answer's input at `now`.
pub fn pump(exposure: &mut Exposure, now: Timestamp, driver: &mut impl ExposureDriver) {
    while step(exposure, now, driver) {}
}

#[cfg(test)]
mod tests {
    use super::super::exposure::{Completion, Payload, Request, RequestKind};
    use super::super::outcome::Outcome;
    use super::super::sim::{exposure, exposure_handing_ahead};
    use super::super::sources::Credential;
    use super::*;

    /// A driver that records what it is given and answers as told.
    struct Script {
        answer: Answer,
        handed: Handed,
        recall: bool,
        delivered: Vec<Delivery>,
        dispatched: Vec<RequestId>,
        asked: Vec<ReceiverId>,
        recalls: Vec<RequestId>,
        closed: Vec<Correlation>,
        stopped: bool,
    }

    impl Script {
        fn new(answer: Answer) -> Script {
            Script {
                answer,
                handed: Handed::Taken,
                recall: false,
                delivered: Vec::new(),
                dispatched: Vec::new(),
                asked: Vec::new(),
                recalls: Vec::new(),
                closed: Vec::new(),
                stopped: false,
            }
        }

        fn outcome(&self, id: RequestId) -> Option<&Outcome> {
            self.delivered
                .iter()
                .find(|d| d.request_id == id)
                .map(|d| &d.outcome)
        }
    }

    impl ExposureDriver for Script {
        fn deliver(&mut self, delivery: Delivery) {
            self.delivered.push(delivery);
        }
        fn dispatch(&mut self, dispatch: Box<Dispatch>) -> Handed {
            self.dispatched.push(dispatch.request_id);
            self.handed
        }
        fn ask(&mut self, receiver: ReceiverId) -> Answer {
            self.asked.push(receiver);
            self.answer
        }
        fn recall(&mut self, _receiver: ReceiverId, request_id: RequestId) -> bool {
            self.recalls.push(request_id);
            self.recall
        }
        fn close_connection(&mut self, correlation: Correlation) {
            self.closed.push(correlation);
        }
        fn stop_listening(&mut self) {
            self.stopped = true;
        }
    }

    /// A call of `A::open` (receiver 0) on connection `c`.
    fn call(ex: &mut Exposure, c: Correlation) -> RequestId {
        ex.handle_request(
            0,
            0,
            Request {
                correlation: c,
                kind: RequestKind::Call {
                    member: "A::open".into(),
                    payload: Payload::Json(b"{\"ok\":1}".to_vec()),
                },
                digest: None,
                credential: Credential::Bearer(Some("t-ann".into())),
                client_id: None,
            },
        )
    }

    fn refused(outcome: Option<&Outcome>) -> bool {
        matches!(outcome, Some(Outcome::Refusal(_)))
    }

    #[test]
    fn an_ask_answered_born_lets_the_queued_call_dispatch() {
        let mut ex = exposure();
        let id = call(&mut ex, 1);
        let mut d = Script::new(Answer::Born(7));
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.asked, vec![0]);
        assert_eq!(d.dispatched, vec![id]);
        assert!(d.delivered.is_empty());
    }

    #[test]
    fn an_ask_answered_absent_settles_the_queued_call() {
        let mut ex = exposure();
        let id = call(&mut ex, 1);
        let mut d = Script::new(Answer::Absent);
        pump(&mut ex, 0, &mut d);
        assert!(d.dispatched.is_empty());
        assert!(refused(d.outcome(id)));
    }

    #[test]
    fn an_ask_answered_later_feeds_nothing() {
        let mut ex = exposure();
        let id = call(&mut ex, 1);
        let mut d = Script::new(Answer::Later);
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.asked, vec![0]);
        assert!(d.dispatched.is_empty() && d.delivered.is_empty());
        // The driver's own answer, later, lets it go.
        ex.handle_input(
            0,
            Input::ReceiverBorn {
                receiver: 0,
                stamp: 1,
            },
        );
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.dispatched, vec![id]);
    }

    #[test]
    fn a_dispatch_not_taken_settles_as_the_exposure_says() {
        let mut ex = exposure();
        let id = call(&mut ex, 1);
        let mut d = Script::new(Answer::Born(1));
        d.handed = Handed::NotTaken;
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.dispatched, vec![id]);
        assert!(refused(d.outcome(id)));
        assert_eq!(ex.pending_len(), 0);
    }

    #[test]
    fn a_taken_dispatch_completes_by_its_completion() {
        let mut ex = exposure();
        let id = call(&mut ex, 1);
        let mut d = Script::new(Answer::Born(1));
        pump(&mut ex, 0, &mut d);
        assert!(d.outcome(id).is_none());
        ex.handle_input(
            0,
            Input::Completion {
                request_id: id,
                completion: Completion::Returned(b"{}".to_vec()),
            },
        );
        pump(&mut ex, 0, &mut d);
        assert!(matches!(d.outcome(id), Some(Outcome::Result(_))));
    }

    /// Two calls to receiver 0, the second handed ahead, then `stop()`:
    /// the exposure asks both back (it cannot know whether the first
    /// started).
    fn recall_after_stop(accept: bool) -> (Script, [RequestId; 2], Exposure) {
        let mut ex = exposure_handing_ahead(1);
        let first = call(&mut ex, 1);
        let ahead = call(&mut ex, 2);
        let mut d = Script::new(Answer::Born(1));
        d.recall = accept;
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.dispatched, vec![first, ahead]);
        ex.handle_input(0, Input::Stop);
        pump(&mut ex, 0, &mut d);
        assert_eq!(d.recalls, vec![first, ahead]);
        (d, [first, ahead], ex)
    }

    #[test]
    fn a_recall_accepted_settles_the_calls() {
        let (d, ids, ex) = recall_after_stop(true);
        assert!(ids.iter().all(|&id| refused(d.outcome(id))));
        assert_eq!(ex.pending_len(), 0);
    }

    #[test]
    fn a_recall_declined_leaves_the_calls_to_complete() {
        let (mut d, ids, mut ex) = recall_after_stop(false);
        assert!(ids.iter().all(|&id| d.outcome(id).is_none()));
        for id in ids {
            ex.handle_input(
                0,
                Input::Completion {
                    request_id: id,
                    completion: Completion::Returned(b"{}".to_vec()),
                },
            );
        }
        pump(&mut ex, 0, &mut d);
        assert!(ids
            .iter()
            .all(|&id| matches!(d.outcome(id), Some(Outcome::Result(_)))));
    }

    #[test]
    fn step_acts_on_one_event_at_a_time() {
        let mut ex = exposure();
        call(&mut ex, 1);
        let mut d = Script::new(Answer::Born(1));
        assert!(step(&mut ex, 0, &mut d));
        assert_eq!(d.asked, vec![0]);
        assert!(d.dispatched.is_empty());
        assert!(step(&mut ex, 0, &mut d));
        assert_eq!(d.dispatched.len(), 1);
        assert!(!step(&mut ex, 0, &mut d));
    }
}
