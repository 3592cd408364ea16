//! The async twin: `MultiHost<S>` as an [`AsyncConnectionSource`] when `S` is one.

use std::time::Duration;

use diesel_async::AsyncConnection;

use super::{MultiHost, NodeConnection, UrlSource, no_nodes, out_of_time};
use crate::asynchronous::AsyncConnectionSource;
use crate::error::PoolError;
use crate::retry::OwnedConnection;

impl<S: AsyncConnectionSource> AsyncConnectionSource for MultiHost<S> {
    type Connection = S::Connection;
    type Pooled<'a>
        = NodeConnection<S::Pooled<'a>>
    where
        Self: 'a;

    async fn checkout(&self) -> Result<Self::Pooled<'_>, PoolError> {
        self.checkout_within(None).await
    }

    /// Asks the nodes in turn, each with the time left, until one serves.
    async fn checkout_within(
        &self,
        remaining: Option<Duration>,
    ) -> Result<Self::Pooled<'_>, PoolError> {
        let deadline = crate::retry::deadline::instant(remaining);
        let mut last = None;
        for index in self.plan() {
            let Some(node) = self.nodes.get(index) else {
                continue;
            };
            let left = crate::retry::deadline::remaining(deadline);
            if let Some(error) = last.take() {
                if left == Some(Duration::ZERO) {
                    return Err(out_of_time(error));
                }
            }
            match node.source.checkout_within(left).await {
                Ok(pooled) => {
                    self.served(index);
                    return Ok(NodeConnection {
                        node: index,
                        pooled,
                    });
                }
                Err(error) => {
                    self.failed(index, &error);
                    last = Some(error);
                }
            }
        }
        Err(last.unwrap_or_else(no_nodes))
    }

    fn discard(&self, pooled: Self::Pooled<'_>) {
        self.discarded(pooled.node);
        match self.nodes.get(pooled.node) {
            Some(node) => node.source.discard(pooled.pooled),
            None => drop(pooled),
        }
    }
}

impl<C: AsyncConnection> AsyncConnectionSource for UrlSource<C> {
    type Connection = C;
    type Pooled<'a>
        = OwnedConnection<C>
    where
        Self: 'a;

    async fn checkout(&self) -> Result<OwnedConnection<C>, PoolError> {
        Ok(OwnedConnection::new(C::establish(&self.url).await?))
    }
}
