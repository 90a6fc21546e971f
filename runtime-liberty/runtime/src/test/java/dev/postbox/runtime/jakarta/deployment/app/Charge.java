package dev.postbox.runtime.jakarta.deployment.app;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.util.UUID;

/**
 * One charge per handled event. No unique constraint on the event or the order: a doubled event
 * would show as a second row, so the tests see whether the inbox kept it out.
 */
@Entity
@Table(name = "deployment_charge")
public class Charge {

  @Id
  @Column(name = "id", length = 36)
  private String id;

  @Column(name = "event_id", nullable = false, length = 256)
  private String eventId;

  @Column(name = "order_id", nullable = false, length = 256)
  private String orderId;

  protected Charge() {}

  Charge(String eventId, String orderId) {
    this.id = UUID.randomUUID().toString();
    this.eventId = eventId;
    this.orderId = orderId;
  }
}
