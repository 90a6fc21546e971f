package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.db.StringMapJson;
import dev.postbox.runtime.outbox.OutboxEvent;
import dev.postbox.runtime.outbox.Partitioner;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Lob;
import jakarta.persistence.Table;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

/**
 * An outbox row as the application's transaction writes it. Only inserts go through JPA; the relay
 * reads and updates rows with JDBC. Fields are private: JPA change tracking must see every write.
 */
@Entity
@Table(name = "postbox_outbox")
public class OutboxEventEntity {

  // The event id (unique, assigned here) is the JPA identity; the numeric id column, which orders
  // the relay's claims, is left to the database. Mapping it as a generated IDENTITY would cost a
  // round trip per insert to read it back, and EclipseLink reads it with a function H2 2.x lacks.
  @Id
  @Column(name = "event_id", nullable = false, updatable = false)
  private String eventId;

  @Column(name = "destination", nullable = false, updatable = false)
  private String destination;

  @Column(name = "partition_no", nullable = false, updatable = false)
  private int partitionNo;

  @Column(name = "event_key", updatable = false)
  private String eventKey;

  @Column(name = "event_type", nullable = false, updatable = false)
  private String eventType;

  @Column(name = "source", nullable = false, updatable = false)
  private String source;

  @Column(name = "subject", updatable = false)
  private String subject;

  @Column(name = "content_type", updatable = false)
  private String contentType;

  @Column(name = "headers", nullable = false, updatable = false)
  private String headers;

  @Lob
  @Column(name = "payload", nullable = false, updatable = false)
  private byte[] payload;

  // JPA 3.1 maps OffsetDateTime, not Instant: convert at the edge, always in UTC.
  @Column(name = "event_time", nullable = false, updatable = false)
  private OffsetDateTime eventTime;

  @Column(name = "created_at", nullable = false, updatable = false)
  private OffsetDateTime createdAt;

  @Column(name = "status", nullable = false)
  private String status;

  @Column(name = "attempts", nullable = false)
  private int attempts;

  @Column(name = "next_attempt_at", nullable = false)
  private OffsetDateTime nextAttemptAt;

  protected OutboxEventEntity() {}

  static OutboxEventEntity pending(OutboxEvent e, int partitions, Instant now) {
    OutboxEventEntity row = new OutboxEventEntity();
    row.eventId = e.eventId();
    row.destination = e.destination();
    row.partitionNo = Partitioner.partition(e.key(), e.eventId(), partitions);
    row.eventKey = e.key();
    row.eventType = e.type();
    row.source = e.source();
    row.subject = e.subject();
    row.contentType = e.contentType();
    row.headers = StringMapJson.write(e.headers());
    row.payload = e.payload();
    row.eventTime = OffsetDateTime.ofInstant(e.time(), ZoneOffset.UTC);
    row.createdAt = OffsetDateTime.ofInstant(now, ZoneOffset.UTC);
    row.status = "PENDING";
    row.attempts = 0;
    row.nextAttemptAt = row.createdAt;
    return row;
  }

  public int partition() {
    return partitionNo;
  }

  public String eventId() {
    return eventId;
  }
}
