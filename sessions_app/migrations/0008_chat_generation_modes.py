# Regenerate and edit-and-resend are generations of their own (the chat's item 2).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0007_message_chunks'),
    ]

    operations = [
        migrations.AlterField(
            model_name='promptgeneration',
            name='mode',
            field=models.CharField(choices=[('prompt', 'New prompt'), ('resume', 'Resume'), ('fresh', 'Start fresh'), ('regenerate', 'Regenerate'), ('edit', 'Edited prompt')], default='prompt', max_length=10),
        ),
    ]
