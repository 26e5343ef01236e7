//! JSON-RPC over the framing: requests with bounded waits, notifications, and the server's own
//! requests answered by a handler.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};

use crate::framing::{read_frame, write_frame};

/// How a request failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// No answer within the time allowed; the request was cancelled.
    #[error("the server did not answer {method} within {waited:?}")]
    TimedOut {
        /// The request.
        method: String,
        /// How long it waited.
        waited: Duration,
    },
    /// The connection ended before the answer.
    #[error("the server stopped before answering")]
    Closed,
    /// The server answered with an error.
    #[error("the server answered {method} with error {code}: {message}")]
    Server {
        /// The request.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
}

/// What the client does with messages the server starts.
pub(crate) trait Handler: Send + Sync + 'static {
    /// A notification.
    fn notification(&self, method: &str, params: Value);
    /// A request; the answer is sent back as its result, or an error `(code, message)`.
    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)>;
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, (i64, String)>>>>>;

/// One JSON-RPC connection. Cheap to share behind an `Arc`.
pub(crate) struct Connection {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicI64,
    closed: watch::Receiver<bool>,
}

impl Connection {
    /// Starts the reader and writer tasks over `input` (the server's stdout) and `output` (its
    /// stdin).
    pub(crate) fn start<R, W>(input: R, output: W, handler: Arc<dyn Handler>) -> Self
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending: Pending = Arc::default();
        let (closed_tx, closed) = watch::channel(false);
        let closed_tx = Arc::new(closed_tx);

        let writer_closed = closed_tx.clone();
        tokio::spawn(async move {
            let mut output = output;
            while let Some(body) = queue.recv().await {
                if write_frame(&mut output, &body).await.is_err() {
                    break;
                }
            }
            let _ = writer_closed.send(true);
        });

        let reader_pending = pending.clone();
        let answers = outgoing.clone();
        tokio::spawn(async move {
            let mut input = input;
            loop {
                let body = match read_frame(&mut input).await {
                    Ok(body) => body,
                    Err(error) => {
                        tracing::debug!(%error, "language server output ended");
                        break;
                    }
                };
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    tracing::debug!("language server sent a message that is not JSON");
                    continue;
                };
                dispatch(message, &reader_pending, &answers, handler.as_ref());
            }
            let _ = closed_tx.send(true);
            // Wake every waiter: dropping the senders fails their receivers.
            reader_pending.lock().clear();
        });

        Self {
            outgoing,
            pending,
            next_id: AtomicI64::new(1),
            closed,
        }
    }

    /// True once either direction ended.
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Sends a request and waits at most `wait` for its answer.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        if self.is_closed() {
            self.pending.lock().remove(&id);
            return Err(RpcError::Closed);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.outgoing.send(encode(&message)).is_err() {
            self.pending.lock().remove(&id);
            return Err(RpcError::Closed);
        }
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err((code, message)))) => Err(RpcError::Server {
                method: method.to_owned(),
                code,
                message,
            }),
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => {
                self.pending.lock().remove(&id);
                self.notify("$/cancelRequest", json!({ "id": id }));
                Err(RpcError::TimedOut {
                    method: method.to_owned(),
                    waited: wait,
                })
            }
        }
    }

    /// Sends a notification. A closed connection drops it.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = self.outgoing.send(encode(&message));
    }
}

fn encode(message: &Value) -> Vec<u8> {
    serde_json::to_vec(message).unwrap_or_default()
}

fn dispatch(
    message: Value,
    pending: &Pending,
    answers: &mpsc::UnboundedSender<Vec<u8>>,
    handler: &dyn Handler,
) {
    let Value::Object(mut fields) = message else {
        return;
    };
    let method = fields
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = fields.remove("id");
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = fields.remove("params").unwrap_or(Value::Null);
            let answer = match handler.request(&method, params) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => json!({
                    "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
                }),
            };
            let _ = answers.send(encode(&answer));
        }
        (Some(method), None) => {
            let params = fields.remove("params").unwrap_or(Value::Null);
            handler.notification(&method, params);
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else {
                return;
            };
            let Some(waiter) = pending.lock().remove(&id) else {
                return;
            };
            let answer = match fields.remove("error") {
                Some(error) => Err((
                    error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                )),
                None => Ok(fields.remove("result").unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{BufReader, duplex};

    struct Recorder(Mutex<Vec<(String, Value)>>);

    impl Handler for Recorder {
        fn notification(&self, method: &str, params: Value) {
            self.0.lock().push((method.to_owned(), params));
        }
        fn request(&self, method: &str, _params: Value) -> Result<Value, (i64, String)> {
            if method == "workspace/configuration" {
                Ok(json!([null]))
            } else {
                Err((-32601, "unknown".to_owned()))
            }
        }
    }

    /// A connection whose peer is the test: what the client writes, and a writer to its input.
    fn pair() -> (
        Connection,
        Arc<Recorder>,
        BufReader<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
    ) {
        let (client_out, server_in) = duplex(1 << 16);
        let (server_out, client_in) = duplex(1 << 16);
        let recorder = Arc::new(Recorder(Mutex::default()));
        let connection = Connection::start(BufReader::new(client_in), client_out, recorder.clone());
        (connection, recorder, BufReader::new(server_in), server_out)
    }

    async fn next(reader: &mut BufReader<tokio::io::DuplexStream>) -> Value {
        serde_json::from_slice(&read_frame(reader).await.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn answers_reach_their_requests_and_server_requests_are_answered() {
        let (connection, recorder, mut from_client, mut to_client) = pair();
        let connection = Arc::new(connection);
        let asking = tokio::spawn({
            let connection = connection.clone();
            async move {
                connection
                    .request("hover", json!({}), Duration::from_secs(5))
                    .await
            }
        });
        let request = next(&mut from_client).await;
        assert_eq!(request["method"], "hover");
        // The server asks something first, and notifies.
        let ask = json!({"jsonrpc":"2.0","id":"s1","method":"workspace/configuration","params":{}});
        write_frame(&mut to_client, &encode(&ask)).await.unwrap();
        let note = json!({"jsonrpc":"2.0","method":"window/logMessage","params":{"message":"hi"}});
        write_frame(&mut to_client, &encode(&note)).await.unwrap();
        let answer = next(&mut from_client).await;
        assert_eq!(answer, json!({"jsonrpc":"2.0","id":"s1","result":[null]}));
        let reply = json!({"jsonrpc":"2.0","id":request["id"],"result":{"contents":"x"}});
        write_frame(&mut to_client, &encode(&reply)).await.unwrap();
        assert_eq!(asking.await.unwrap().unwrap(), json!({"contents":"x"}));
        assert_eq!(recorder.0.lock()[0].0, "window/logMessage");
    }

    fn deep() -> bool {
        std::env::var_os("TACKLE_DEEP").is_some()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(if deep() { 64 } else { 4 }))]

        /// A server that answers with JSON nested past serde_json's limit costs that request its
        /// answer, never the client: the next answer is read.
        #[test]
        fn a_deeply_nested_answer_is_dropped_and_the_connection_goes_on(
            depth in 129usize..if deep() { 2_000_000 } else { 200_000 },
            array in proptest::prelude::any::<bool>(),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let (connection, _, mut from_client, mut to_client) = pair();
                let connection = Arc::new(connection);
                let first = tokio::spawn({
                    let connection = connection.clone();
                    async move { connection.request("a", json!({}), Duration::from_millis(300)).await }
                });
                let request = next(&mut from_client).await;
                let (open, close) = if array { ("[", "]") } else { (r#"{"k":"#, "}") };
                let deep = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{}1{}}}"#,
                    request["id"],
                    open.repeat(depth),
                    close.repeat(depth)
                );
                write_frame(&mut to_client, deep.as_bytes()).await.unwrap();
                let error = first.await.unwrap().unwrap_err();
                assert!(matches!(error, RpcError::TimedOut { .. }), "{error:?}");
                let second = tokio::spawn({
                    let connection = connection.clone();
                    async move { connection.request("b", json!({}), Duration::from_secs(5)).await }
                });
                let mut request = next(&mut from_client).await;
                while request["method"] != "b" {
                    request = next(&mut from_client).await;
                }
                let reply = json!({"jsonrpc":"2.0","id":request["id"],"result":7});
                write_frame(&mut to_client, &encode(&reply)).await.unwrap();
                assert_eq!(second.await.unwrap().unwrap(), json!(7));
            });
        }
    }

    #[tokio::test]
    async fn an_unanswered_request_times_out_and_is_cancelled() {
        let (connection, _, mut from_client, _to_client) = pair();
        let error = connection
            .request("slow", json!({}), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(error, RpcError::TimedOut { .. }), "{error:?}");
        let request = next(&mut from_client).await;
        let cancel = next(&mut from_client).await;
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], request["id"]);
    }

    #[tokio::test]
    async fn a_closed_stream_fails_waiters_at_once() {
        let (connection, _, mut from_client, to_client) = pair();
        let connection = Arc::new(connection);
        let asking = tokio::spawn({
            let connection = connection.clone();
            async move {
                connection
                    .request("x", json!({}), Duration::from_secs(30))
                    .await
            }
        });
        let _ = next(&mut from_client).await;
        drop(to_client);
        let error = tokio::time::timeout(Duration::from_secs(5), asking)
            .await
            .expect("the waiter was woken")
            .unwrap()
            .unwrap_err();
        assert_eq!(error, RpcError::Closed);
        assert!(connection.is_closed());
    }

    #[tokio::test]
    async fn server_errors_carry_their_code_and_message() {
        let (connection, _, mut from_client, mut to_client) = pair();
        let connection = Arc::new(connection);
        let asking = tokio::spawn({
            let connection = connection.clone();
            async move {
                connection
                    .request("bad", json!({}), Duration::from_secs(5))
                    .await
            }
        });
        let request = next(&mut from_client).await;
        let reply =
            json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32602,"message":"no"}});
        write_frame(&mut to_client, &encode(&reply)).await.unwrap();
        assert_eq!(
            asking.await.unwrap().unwrap_err(),
            RpcError::Server {
                method: "bad".into(),
                code: -32602,
                message: "no".into()
            }
        );
    }
}
